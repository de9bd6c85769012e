package main

import "github.com/my-agent-crew/crew/projections"

// servedProjections are the projections crew serve runs. The test build
// (tag crewtest) can hold them back to show the server catching up.
var servedProjections = projections.All

// holdProjectionsEnv names the catch-up hold of the test build.
const holdProjectionsEnv = "CREW_TEST_HOLD_PROJECTIONS"
