package shmem

// SameHost exposes how TeamShared picks its members.
var SameHost = sameHost
