package loop

// DelegateTool is the loop tool that runs a child turn on another agent
// (R-DEL).
const DelegateTool = "delegate"
