//go:build race

package seek

// raceEnabled is set when the tests run under the race detector, which makes
// every seek several times slower: the randomized test checks fewer targets
// per run then (a new seed each run covers others).
const raceEnabled = true
