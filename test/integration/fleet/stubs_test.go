package fleet

import "testing"

func testCommands(t *testing.T, f *fleet)     { t.Skip("todo") }
func testNodeNotReady(t *testing.T, f *fleet) { t.Skip("todo") }
func testUnknownNode(t *testing.T, f *fleet)  { t.Skip("todo") }
