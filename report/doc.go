// Package report renders ckptcheck's reports for people and CI systems.
//
// A verify.Report holds every judgement; this package decides nothing, it
// only writes a report in a format: text for terminals (verdict first,
// findings grouped by code and collapsed the way transformers' loading
// report collapses layer indices) and JSON (the report's own form,
// schema ckptcheck.report/v1). Write picks the renderer by name.
package report
