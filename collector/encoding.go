package collector

import (
	"net/http"
	"strconv"
	"strings"
)

// The content codings the /metrics handler can send.
const (
	codingGzip     = "gzip"
	codingIdentity = "identity"
)

// negotiateEncoding picks the coding of a response to h's Accept-Encoding
// by RFC 9110 §12.5.3, as client_golang's promhttp does (its gddo copy is
// internal), with coding names compared without case as the RFC has them:
// gzip (or x-gzip) when its weight, or that of "*", is above 0 and not below
// an explicit weight of identity; otherwise identity, which is acceptable
// unless "identity;q=0", or "*;q=0" without an identity entry, refuses it.
// ok is false when neither is acceptable (406). No Accept-Encoding, or an
// empty one, is identity.
func negotiateEncoding(h http.Header) (coding string, ok bool) {
	weights := map[string]float64{}
	for _, field := range h.Values("Accept-Encoding") {
		for _, element := range strings.Split(field, ",") {
			name, q, valid := parseCodingWeight(element)
			if !valid {
				continue
			}
			if _, dup := weights[name]; !dup {
				weights[name] = q
			}
		}
	}
	weight := func(names ...string) (float64, bool) {
		for _, n := range names {
			if q, ok := weights[n]; ok {
				return q, true
			}
		}
		return 0, false
	}
	gzipQ, _ := weight(codingGzip, "x-gzip", "*")
	identityQ, explicit := weight(codingIdentity)
	if !explicit {
		identityQ = 1
		if q, ok := weights["*"]; ok && q == 0 {
			identityQ = 0
		}
	}
	switch {
	case gzipQ > 0 && (!explicit || gzipQ >= identityQ):
		return codingGzip, true
	case identityQ > 0:
		return codingIdentity, true
	}
	return "", false
}

// parseCodingWeight reads one element of Accept-Encoding: a coding and an
// optional ";q=" weight of at most three decimals between 0 and 1. An
// element that is not one is ignored, as promhttp's parser ignores it.
func parseCodingWeight(element string) (name string, q float64, ok bool) {
	name, params, _ := strings.Cut(element, ";")
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "" || strings.ContainsAny(name, " \t\"") {
		return "", 0, false
	}
	q = 1
	for _, p := range strings.Split(params, ";") {
		key, value, _ := strings.Cut(strings.TrimSpace(p), "=")
		if strings.TrimSpace(key) == "" {
			continue
		}
		if !strings.EqualFold(strings.TrimSpace(key), "q") {
			return "", 0, false // Accept-Encoding has no other parameter
		}
		value = strings.TrimSpace(value)
		if !qvalue(value) {
			return "", 0, false
		}
		q, _ = strconv.ParseFloat(strings.TrimSuffix(value, "."), 64)
	}
	return name, q, true
}

// qvalue reports the RFC 9110 weight syntax: "0", "1", up to three
// decimals ("0.125", "1.000"); no exponent, sign or "Inf".
func qvalue(s string) bool {
	whole, frac, _ := strings.Cut(s, ".")
	if whole != "0" && whole != "1" || len(frac) > 3 {
		return false
	}
	for _, c := range frac {
		if c < '0' || c > '9' || (whole == "1" && c != '0') {
			return false
		}
	}
	return true
}
