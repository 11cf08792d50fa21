// Package nolink is a program's view of goshmem when it links no
// provider: its test imports shmem and the bootstrap, and nothing that
// registers a provider, so it sees what such a program's users see.
package nolink
