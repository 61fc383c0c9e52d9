//go:build !linux

package main

// dropStartPages: only Linux is measured and supported here (see
// pages_linux.go); elsewhere the pages stay as the system keeps them.
func dropStartPages() int { return 0 }

func vmRSS() int { return 0 }
