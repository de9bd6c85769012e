//go:build !race

package main

// failoverMessages is how many conversations TestClusterFailover runs
// (issue 30 item 4: 1,000 in the non-race step of .ci/run).
const failoverMessages = 1000
