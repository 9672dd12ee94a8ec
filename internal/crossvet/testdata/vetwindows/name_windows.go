package vetwindows

import "fmt"

// Name has a vet finding that only a Windows build sees.
func Name() string { return fmt.Sprintf("%d", "x") }
