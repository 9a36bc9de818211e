package node

import (
	"hash/fnv"
	"strconv"
	"strings"
)

// DCQCN is the RoCE congestion control of ConnectX NICs: the reaction point
// (RP, the sender) lowers a queue pair's rate on every congestion
// notification packet (CNP) and raises it again by timers and byte counters;
// the notification point (NP, the receiver) sends CNPs for ECN-marked packets,
// at most one per min_time_between_cnps per port. Its parameters are read from
// the firmware by the driver; two ways exist:
//
//   - MLNX_OFED (DOCA-OFED): /sys/class/net/<if>/ecn/roce_rp/<name> and
//     roce_np/<name>, one decimal value per file, on physical functions only
//     (en_sysfs.c mlx5e_fill_rp_attributes / mlx5e_fill_np_attributes; no
//     params/ directory, whatever NVIDIA's page says);
//   - upstream mlx5_ib: debugfs, /sys/kernel/debug/mlx5/<bdf>/cc_params/, 22
//     files of mode 0600 (root only), created when the firmware allows
//     querying and changing them (drivers/infiniband/hw/mlx5/cong.c).
//
// Neither is an interface a node must have: a parameter that could not be read
// is unknown, never its default.
type DCQCNParams struct {
	// Source is DCQCNSourceSysfs or DCQCNSourceDebugfs.
	Source string
	// Values are by DCQCN name (the MLNX_OFED file name, mlxconfig's
	// parameter name in lower case); only those read.
	Values map[string]uint64
}

// The places DCQCN parameters are read from.
const (
	DCQCNSourceSysfs   = "sysfs"
	DCQCNSourceDebugfs = "debugfs"
)

// DCQCNParamNames are the parameters compared, in the order of the driver's
// own tables: the reaction point's, then the notification point's.
var DCQCNParamNames = []string{
	"clamp_tgt_rate", "clamp_tgt_rate_after_time_inc", "rpg_time_reset", "rpg_byte_reset",
	"rpg_threshold", "rpg_max_rate", "rpg_ai_rate", "rpg_hai_rate", "rpg_gd", "rpg_min_dec_fac",
	"rpg_min_rate", "rate_to_set_on_first_cnp", "dce_tcp_g", "dce_tcp_rtt",
	"rate_reduce_monitor_period", "initial_alpha_value",
	"min_time_between_cnps", "cnp_dscp", "cnp_802p_prio",
}

// DCQCNReactionPointParams is how many of DCQCNParamNames are the reaction
// point's (roce_rp/); the rest are the notification point's (roce_np/).
const DCQCNReactionPointParams = 16

// DCQCNDefaults are the firmware defaults, identical in real `mlxconfig
// query` dumps of ConnectX-5, ConnectX-6 Lx, ConnectX-7 and BlueField
// (Default = Current = Next Boot): RPG_TIME_RESET 300 µs, RPG_BYTE_RESET 32767
// bytes, RPG_AI_RATE 5 and RPG_HAI_RATE 50 Mb/s, RPG_GD 11 (log2),
// RPG_MIN_DEC_FAC 50 %, DCE_TCP_G 1019/1024, RATE_REDUCE_MONITOR_PERIOD 4 µs,
// MIN_TIME_BETWEEN_CNPS 4 µs, CNP_DSCP 48, CNP_802P_PRIO 6.
var DCQCNDefaults = map[string]uint64{
	"clamp_tgt_rate": 0, "clamp_tgt_rate_after_time_inc": 1, "rpg_time_reset": 300, "rpg_byte_reset": 32767,
	"rpg_threshold": 1, "rpg_max_rate": 0, "rpg_ai_rate": 5, "rpg_hai_rate": 50, "rpg_gd": 11, "rpg_min_dec_fac": 50,
	"rpg_min_rate": 1, "rate_to_set_on_first_cnp": 0, "dce_tcp_g": 1019, "dce_tcp_rtt": 1,
	"rate_reduce_monitor_period": 4, "initial_alpha_value": 1023,
	"min_time_between_cnps": 4, "cnp_dscp": uint64(DefaultCNPDSCP), "cnp_802p_prio": 6,
}

// debugfsCCNames maps upstream's cc_params files onto DCQCN names
// (cong.c mlx5_ib_dbg_cc_name[] and the PRM fields each one reads).
var debugfsCCNames = map[string]string{
	"rp_clamp_tgt_rate": "clamp_tgt_rate", "rp_clamp_tgt_rate_ati": "clamp_tgt_rate_after_time_inc",
	"rp_time_reset": "rpg_time_reset", "rp_byte_reset": "rpg_byte_reset", "rp_threshold": "rpg_threshold",
	"rp_ai_rate": "rpg_ai_rate", "rp_max_rate": "rpg_max_rate", "rp_hai_rate": "rpg_hai_rate",
	"rp_min_dec_fac": "rpg_min_dec_fac", "rp_min_rate": "rpg_min_rate",
	"rp_rate_to_set_on_first_cnp": "rate_to_set_on_first_cnp", "rp_dce_tcp_g": "dce_tcp_g",
	"rp_dce_tcp_rtt": "dce_tcp_rtt", "rp_rate_reduce_monitor_period": "rate_reduce_monitor_period",
	"rp_initial_alpha_value": "initial_alpha_value", "rp_gd": "rpg_gd",
	"np_min_time_between_cnps": "min_time_between_cnps", "np_cnp_dscp": "cnp_dscp", "np_cnp_prio": "cnp_802p_prio",
}

// DebugfsCCParamFile is the cc_params file of a DCQCN name, "" for none.
func DebugfsCCParamFile(name string) string {
	for file, n := range debugfsCCNames {
		if n == name {
			return file
		}
	}
	return ""
}

// Hash identifies the parameter set for comparison across nodes: eight hex
// digits of FNV-1a over every compared name with its value, "?" for one not
// read, so that the same values hash alike whichever way they were read.
func (p *DCQCNParams) Hash() string {
	h := fnv.New32a()
	for _, name := range DCQCNParamNames {
		v := "?"
		if x, ok := p.Values[name]; ok {
			v = strconv.FormatUint(x, 10)
		}
		h.Write([]byte(name + "=" + v + "\n"))
	}
	return strconv.FormatUint(uint64(h.Sum32())|1<<32, 16)[1:]
}

// NonDefault names the parameters read whose value is not the default, in
// DCQCNParamNames order; cnp_dscp is judged against cnpDSCP (the plan's).
func (p *DCQCNParams) NonDefault(cnpDSCP int) []string {
	var out []string
	for _, name := range DCQCNParamNames {
		v, ok := p.Values[name]
		if !ok {
			continue
		}
		want := DCQCNDefaults[name]
		if name == "cnp_dscp" {
			want = uint64(cnpDSCP)
		}
		if v != want {
			out = append(out, name)
		}
	}
	return out
}

// MlxconfigName is a DCQCN parameter's firmware configuration name for port
// (1 or 2): RPG_AI_RATE_P1.
func MlxconfigName(name string, port int) string {
	return strings.ToUpper(name) + "_P" + strconv.Itoa(port)
}
