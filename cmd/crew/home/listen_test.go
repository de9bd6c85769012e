package home

import (
	"net"
	"testing"
)

// An unspecified listen address is reached, and named, as 127.0.0.1.
func TestReachableURL(t *testing.T) {
	for addr, want := range map[string]string{"0.0.0.0:7420": "http://127.0.0.1:7420", "[::]:80": "http://127.0.0.1:80", "127.0.0.1:9": "http://127.0.0.1:9", "[::1]:9": "http://[::1]:9"} {
		a, _ := net.ResolveTCPAddr("tcp", addr)
		if got := ReachableURL(a); got != want {
			t.Errorf("ReachableURL(%s) = %s, want %s", addr, got, want)
		}
	}
}
