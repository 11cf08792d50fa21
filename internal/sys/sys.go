package sys

// WakeAll is the n for FutexWake that wakes every waiter.
const WakeAll = 1<<31 - 1
