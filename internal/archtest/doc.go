// Package archtest holds the tests that keep the package structure what
// ARCHITECTURE.md says it is: which package may import which, and which
// packages build on every OS. It has no code of its own.
package archtest
