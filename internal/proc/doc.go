// Package proc tells whether a process lives and when it started, with
// the standard library alone, so that core, which must not depend on
// x/sys, can tell a dead job's files from a live one's. A pid and its
// start time name one process for good.
package proc
