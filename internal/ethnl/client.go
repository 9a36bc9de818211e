package ethnl

import (
	"fmt"

	"github.com/mdlayher/genetlink"

	"github.com/roce-exporter/roce_exporter/internal/nlconn"
)

// ErrNoFamily means the kernel has no ethtool netlink (before 5.6).
var ErrNoFamily = nlconn.ErrNoFamily

// Client asks the ethtool generic netlink family over one socket, dialled
// on first use and kept by the rule of internal/nlconn. Its methods are
// safe for concurrent use; requests are serialised, each bounded by
// nlconn.DefaultTimeout (a module EEPROM read is an I2C transaction the
// firmware may take long over).
type Client struct{ family *nlconn.Family }

// New returns a Client; nothing is dialled before the first request.
func New(cfg nlconn.FamilyConfig) *Client {
	return &Client{family: nlconn.NewFamily(familyName, cfg)}
}

// Close releases the socket.
func (c *Client) Close() error { return c.family.Close() }

// do sends a request and returns the attributes of its one reply, which
// must be of command reply.
func (c *Client) do(cmd, reply uint8, attrs []byte) ([]byte, error) {
	msgs, err := c.family.Execute(cmd, familyVersion, 0, attrs)
	if err != nil {
		return nil, err
	}
	return replyOf(msgs, reply)
}

func replyOf(msgs []genetlink.Message, reply uint8) ([]byte, error) {
	for _, m := range msgs {
		if m.Header.Command == reply {
			return m.Data, nil
		}
	}
	return nil, fmt.Errorf("%w: no reply of command %d in %d messages", errMalformed, reply, len(msgs))
}

// ModuleEEPROM reads length bytes at offset of a module page (see
// EncodeModuleEEPROMRequest). EOPNOTSUPP: the driver has no netlink module
// access (the caller falls back to the ioctl).
func (c *Client) ModuleEEPROM(ifname string, page, bank uint8, offset, length uint32) ([]byte, error) {
	attrs, err := EncodeModuleEEPROMRequest(ifname, page, bank, offset, length)
	if err != nil {
		return nil, err
	}
	reply, err := c.do(msgModuleEEPROMGet, msgModuleEEPROMGetReply, attrs)
	if err != nil {
		return nil, err
	}
	return DecodeModuleEEPROM(reply)
}

// FEC reads the FEC configuration and statistics of an interface.
func (c *Client) FEC(ifname string) (*FEC, error) {
	attrs, err := encodeRequest(ifname, flagStats, nil)
	if err != nil {
		return nil, err
	}
	reply, err := c.do(msgFECGet, msgFECGetReply, attrs)
	if err != nil {
		return nil, err
	}
	return DecodeFEC(reply)
}

// Linkstate reads the link state and its extended down reason.
func (c *Client) Linkstate(ifname string) (*Linkstate, error) {
	attrs, err := encodeRequest(ifname, 0, nil)
	if err != nil {
		return nil, err
	}
	reply, err := c.do(msgLinkstateGet, msgLinkstateGetReply, attrs)
	if err != nil {
		return nil, err
	}
	return DecodeLinkstate(reply)
}
