package commands

// ConsumerCmd groups the consumer commands.
type ConsumerCmd struct {
	Ls      ConsumerLsCmd      `cmd:"" help:"List a stream's consumers with their positions and lag."`
	Info    ConsumerInfoCmd    `cmd:"" help:"Show one consumer's position, lag and configuration."`
	Reset   ConsumerResetCmd   `cmd:"" help:"Move durable consumers to a time or sequence (plan first, undoable)."`
	History ConsumerHistoryCmd `cmd:"" help:"List a consumer's recorded resets."`
	Recover ConsumerRecoverCmd `cmd:"" help:"Finish consumer changes left unfinished by an interrupted run."`
}
