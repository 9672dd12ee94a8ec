package acks_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/jsctl/jsctl/jsutil/embedded"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Process a stream idempotently: the second consumer shares the first one's
// records, so its replay of the same messages runs no handler.
func Example() {
	dir, _ := os.MkdirTemp("", "acks-example")
	defer os.RemoveAll(dir)
	srv, err := embedded.Start(embedded.Options{StoreDir: dir})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Shutdown()
	nc, _ := nats.Connect("", nats.InProcessServer(srv))
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	_, _ = js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	for i := 1; i <= 3; i++ {
		_, _ = js.Publish(ctx, fmt.Sprintf("orders.%d", i), []byte("order"))
	}
	store, err := acks.Open(ctx, js) // creates the JSCTL_ACKS bucket
	if err != nil {
		fmt.Println(err)
		return
	}
	handler := func(ctx context.Context, d acks.Delivery) error {
		// d.Fence is the claim's revision: pass it to systems that can
		// refuse writes from a worker whose lease was taken over.
		fmt.Printf("handling %s (seq %d)\n", d.Subject, d.Seq)
		return nil // an error would release the claim and nak the message
	}
	for _, name := range []string{"billing", "billing-replay"} {
		cons, _ := js.CreateOrUpdateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy})
		sum, err := store.Consume(ctx, cons, handler,
			acks.WithScope(acks.DefaultScope("ORDERS", "billing")),
			acks.WithMaxMessages(3))
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: processed %d, duplicates %d\n", name, sum.Processed, sum.Duplicates)
	}
	// Output:
	// handling orders.1 (seq 1)
	// handling orders.2 (seq 2)
	// handling orders.3 (seq 3)
	// billing: processed 3, duplicates 0
	// billing-replay: processed 0, duplicates 3
}

// Keys from the payload, records kept for 30 days, and a dead-letter
// subject for messages that fail for good (after 5 failures).
func ExampleWithKey() {
	ctx := context.Background()
	nc, err := nats.Connect(nats.DefaultURL)
	if err != nil {
		return
	}
	js, _ := jetstream.New(nc)
	store, err := acks.Open(ctx, js, acks.WithRetention(30*24*time.Hour))
	if err != nil {
		return
	}
	region, _ := acks.ParseKeySpec("subject:2") // orders.<region>.…
	id, _ := acks.ParseKeySpec("json:order.id")
	cons, _ := js.Consumer(ctx, "ORDERS", "billing")
	_, _ = store.Consume(ctx, cons, func(ctx context.Context, d acks.Delivery) error {
		// d.Key is "<region>|<order id>"; d.KeySpec "subject:2 + json:order.id".
		return nil
	}, acks.WithKey(region, id), acks.WithKeyRequired(), acks.WithMaxFailures(5), acks.WithDeadLetter("dead.orders"))
}
