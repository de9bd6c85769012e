//go:build !linux

package projections

func releaseMapped(data uintptr, size int64) error { return nil }

func releaseExecutable() error { return nil }
