# Splits a CPU profile of the server ("go tool pprof -traces") by function
# family, in microseconds per message (-v msgs=N, the messages the profile
# covers). Each sample goes to the first family, in the order below, with a
# frame in its stack: API requests, acks, compare-and-set checks (the
# stream's LoadLastMsg while storing a message), deliveries, storage (the
# stream's store path), client I/O and routing (read, parse, match, write),
# and the rest (runtime, scheduler, GC). jsutil/acks/bench.sh uses it.
function unit(v) { if (v ~ /ms$/) return substr(v, 1, length(v) - 2) * 1000; if (v ~ /us$/) return substr(v, 1, length(v) - 2) + 0; if (v ~ /s$/) return substr(v, 1, length(v) - 1) * 1e6; return v + 0 }
function flush(   f) {
	if (val == 0) return
	f = "runtime, scheduler and GC"
	if (stack ~ /processDirectGet|getDirectRequest|jsMsgGetRequest|jsConsumer[A-Za-z]*Request|jsStream[A-Za-z]*Request|apiDispatch|processJSAPIRoutedRequests|processNextMsgRequest|processNextMsgReq|processResetReq|checkJetStream/) f = "API requests (pulls, gets, infos)"
	else if (stack ~ /\(\*consumer\)\.(processAck|processInboundAcks|pushAck|ackMsg|processAckMsg|processNak|processTerm)|UpdateAcks|consumerFileStore/) f = "acks"
	else if (stack ~ /\(\*fileStore\)\.LoadLastMsg/ && stack ~ /processJetStreamMsg/) f = "compare-and-set checks"
	else if (stack ~ /\(\*consumer\)\.(loopAndGatherMsgs|getNextMsg|deliverMsg|sendIdleHeartbeat|processWaiting)|UpdateDelivered/) f = "deliveries"
	else if (stack ~ /processJetStreamMsg|\(\*fileStore\)|\(\*msgBlock\)|internalLoop|sendFlowControl|processInboundJetStreamMsg/) f = "storage (stream writes)"
	else if (stack ~ /readLoop|writeLoop|flushOutbound|\(\*client\)\.parse|processInboundClientMsg|deliverMsg|netpoll/) f = "client I/O and routing"
	tot[f] += val; all += val
}
/^-+\+/ { flush(); val = 0; stack = ""; next }
/^ +[0-9.]+(ms|us|s|ns) / { val = unit($1); stack = $2; next }
/^ +[^ :]+$/ { stack = stack "|" $1; next }
END { flush()
	n = split("storage (stream writes)|compare-and-set checks|acks|deliveries|API requests (pulls, gets, infos)|client I/O and routing|runtime, scheduler and GC", order, "|")
	for (i = 1; i <= n; i++) printf "%s\t%.1f\n", order[i], tot[order[i]] / msgs
	printf "total (profile)\t%.1f\n", all / msgs
}
