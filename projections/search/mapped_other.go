//go:build !linux

package search

func releaseMapped(map[string]bool) error { return nil }
