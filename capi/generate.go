package main

//go:generate go run ./gen
