package commands

// StreamCmd groups the stream subcommands.
type StreamCmd struct {
	Timeline StreamTimelineCmd `cmd:"" help:"Show message counts per time bucket, to see where traffic changed."`
}

// Help is the long help of the stream group.
func (StreamCmd) Help() string {
	return `Examples:
  jsctl stream timeline ORDERS                      # first to last message, 20 buckets
  jsctl stream timeline ORDERS --since -6h --subject 'orders.eu.>'`
}
