package dcbnl

// Netlink attribute layout for building test input by hand
// (include/uapi/linux/netlink.h: NLA_HDRLEN, NLA_ALIGN).
const nlaHeaderLen = 4

func nlaAlign(n int) int { return (n + 3) &^ 3 }
