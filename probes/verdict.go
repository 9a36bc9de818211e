package probes

import (
	"log/slog"
	"strings"
)

// fail marks r failed; the hint always follows the reason.
func (r *Result) fail(reason string) {
	r.Success, r.Reason, r.Hint = false, reason, Hint(reason)
}

// failedToRun fails r when its child could not be run or did not finish
// in time, and reports whether it did: such output is not worth parsing.
func (r *Result) failedToRun(out execResult) bool {
	switch {
	case out.Err != nil:
		r.StderrTail = strings.TrimSpace(r.StderrTail + "\n" + out.Err.Error())
		r.fail(ReasonExecError)
	case out.TimedOut:
		r.fail(ReasonTimeout)
	default:
		return false
	}
	return true
}

// judgeBandwidth fails a measured bandwidth below the expected floor or
// clearly below the link's own history; a good run joins the baseline.
func judgeBandwidth(res *Result, base *Baselines, logger *slog.Logger) {
	b, judged := base.Baseline(res.baselineKey())
	res.BaselineBytesPerSecond = b
	switch {
	case res.ExpectedBytesPerSecond > 0 && res.BandwidthBytesPerSecond < res.ExpectedBytesPerSecond:
		res.fail(ReasonBelowThreshold)
	case judged && res.BandwidthBytesPerSecond < RegressionFactor*b:
		res.fail(ReasonRegression)
	default:
		res.Success = true
		if err := base.Record(res.baselineKey(), res.BandwidthBytesPerSecond); err != nil {
			logger.Warn("cannot persist probe baseline", "err", err)
		}
		res.BaselineBytesPerSecond, _ = base.Baseline(res.baselineKey())
	}
}
