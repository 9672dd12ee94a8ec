//go:build !race

package seek

const raceEnabled = false
