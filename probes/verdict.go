package probes

import (
	"log/slog"
	"strings"
)

// verdict is why a run failed: a reason, and the hint when the reason's own
// (Hint) is not the best one (ping names the peer it lost). The zero verdict
// is a pass.
type verdict struct{ reason, hint string }

func failed(reason string) verdict { return verdict{reason: reason} }

// conclude gives a finished run its verdict, and is the one place a result's
// success, reason and hint are set: the run's own verdict (what its program
// printed); when that passed and the run measured a bandwidth, the bandwidth
// against its floor and the link's history; then a proof from the node's
// counters (proof), which overrides both (a wrong priority fails a fast run).
// A bandwidth that passed joins the link's baseline.
func conclude(res *Result, run, proof verdict, base *Baselines, logger *slog.Logger) {
	v := run
	bandwidthPassed := false
	if v.reason == "" && res.Bandwidth != nil {
		v = judgeBandwidth(res, base)
		bandwidthPassed = v.reason == ""
	}
	if proof.reason != "" {
		v = proof
	}
	// A run set aside (an incast that could not judge) is neither.
	res.Success, res.Reason, res.Hint = v.reason == "" && !res.Skipped, v.reason, v.hint
	if res.Hint == "" {
		res.Hint = Hint(v.reason)
	}
	if bandwidthPassed {
		if err := base.Record(res.baselineKey(), res.Bandwidth.BytesPerSecond); err != nil {
			logger.Warn("cannot persist probe baseline", "err", err)
		}
		res.Bandwidth.BaselineBytesPerSecond, _ = base.Baseline(res.baselineKey())
	}
}

// failedToRun says why a child's output is not worth reading: it could not
// be run, or did not finish in time; the zero verdict when it ran.
func failedToRun(res *Result, out execResult) (verdict, bool) {
	switch {
	case out.Err != nil:
		res.StderrTail = strings.TrimSpace(res.StderrTail + "\n" + out.Err.Error())
		return failed(ReasonExecError), true
	case out.TimedOut:
		return failed(ReasonTimeout), true
	}
	return verdict{}, false
}

// judgeBandwidth fails a measured bandwidth below the expected floor or
// clearly below the link's own history.
func judgeBandwidth(res *Result, base *Baselines) verdict {
	bw := res.Bandwidth
	b, judged := base.Baseline(res.baselineKey())
	bw.BaselineBytesPerSecond = b
	switch {
	case bw.ExpectedBytesPerSecond > 0 && bw.BytesPerSecond < bw.ExpectedBytesPerSecond:
		return failed(ReasonBelowThreshold)
	case judged && bw.BytesPerSecond < RegressionFactor*b:
		return failed(ReasonRegression)
	}
	return verdict{}
}
