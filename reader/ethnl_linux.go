//go:build linux

package reader

import (
	"github.com/roce-exporter/roce_exporter/internal/ethnl"
	"github.com/roce-exporter/roce_exporter/internal/nlconn"
)

func dialEthnl() (*ethnl.Client, error) { return ethnl.New(nlconn.FamilyConfig{}), nil }
