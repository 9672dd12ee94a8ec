// Package reset moves durable JetStream consumers to a new position safely:
// it plans each move (target, method and why), executes it in place with the
// server's consumer reset API or by deleting and recreating the consumer
// with the same configuration, verifies the result from consumer info, and
// records every executed move in a KV bucket so it can be undone.
package reset
