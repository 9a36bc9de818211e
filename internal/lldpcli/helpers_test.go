package lldpcli

import "os/exec"

var execLookPath = exec.LookPath
