//go:build !unix

package wholefile

// Special files are tested on Unix, where tests can make them.
var specialCases []readCase
