//go:build linux

package reader

import "github.com/roce-exporter/roce_exporter/internal/ethnl"

func dialEthnl() (*ethnl.Client, error) { return ethnl.Dial() }
