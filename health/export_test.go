package health

// For the external tests (package health_test), which may import what
// imports health (i18n).
var (
	BuildSnapForTest       = buildSnap
	RenameInterfaceForTest = renameInterface
)
