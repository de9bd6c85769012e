//go:build !race

package main

// failoverMessages is how many conversations TestClusterFailover runs.
const failoverMessages = 200
