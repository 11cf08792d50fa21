module github.com/goshmem/goshmem

go 1.26
