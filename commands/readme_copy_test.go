package commands_test

// copyReadmeCases are the command lines of docs/failover.md's "Copy
// consumers to the replica" (merged into readmeCases), against
// readmeFixture's mirror DR_ORDERS of ORDERS.
var copyReadmeCases = map[string]readmeCase{
	"jsctl consumer copy ORDERS --all --to-stream DR_ORDERS":                          {},
	"jsctl consumer copy ORDERS --all --to-stream DR_ORDERS --pause-origin --execute": {},
	"jsctl consumer ls DR_ORDERS":                                                     {},
	"jsctl consumer recover DR_ORDERS --execute":                                      {},
	"jsctl consumer copy ORDERS --all --to-stream DR_ORDERS --to-context dr --execute": {
		run: "jsctl consumer copy ORDERS --all --to-stream DR_ORDERS --to-server $NATS_URL --execute",
		why: "the fixture has no saved context dr: the same copy through a second connection (internal/chaos TestCopyToLeafMirror copies across domains)"},
	"jsctl --js-domain hub consumer copy ORDERS --all --to-stream DR_ORDERS --to-js-domain leaf --execute": {
		run: "jsctl consumer copy ORDERS --all --to-stream DR_ORDERS --execute",
		why: "the fixture has no leaf node or domains (internal/chaos TestCopyToLeafMirror runs that case)"},
	"jsctl --context dr consumer recover DR_ORDERS --execute": {
		run: "jsctl consumer recover DR_ORDERS --execute", why: "the fixture has no saved context dr"},
	"jsctl consumer snapshot save before-failover ORDERS --all --export before-failover.json": {},
	"jsctl consumer snapshot restore before-failover --to-stream DR_ORDERS":                   {},
	"jsctl consumer snapshot restore before-failover --from-file before-failover.json --to-stream DR_ORDERS --to-context dr --execute": {
		run: "jsctl consumer snapshot restore before-failover --from-file before-failover.json --to-stream DR_ORDERS --to-server $NATS_URL --execute",
		why: "the fixture has no saved context dr: the same restore through a second connection"},
}

func init() {
	for line, c := range copyReadmeCases {
		readmeCases[line] = c
	}
}
