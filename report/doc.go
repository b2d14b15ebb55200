// Package report renders ckptcheck's reports for people and CI systems.
//
// A verify.Report holds every judgement; this package decides nothing, it
// only writes a report in a format. Write picks the renderer by name:
//
//   - text for terminals: the verdict first, findings grouped by code and
//     collapsed the way transformers' loading report collapses layer
//     indices;
//   - json, the report's own form (schema ckptcheck.report/v1);
//   - github, GitHub Actions workflow commands: annotations (errors first,
//     at most ten per severity) and the markdown summary for
//     $GITHUB_STEP_SUMMARY, escaped as the runner unescapes them;
//   - markdown for step summaries and pull-request comments, never over
//     MarkdownLimit bytes;
//   - junit, JUnit XML with a test suite per finding Family;
//   - sarif, SARIF 2.1.0 with a rule per finding code;
//   - html, one self-contained page with, for diff --values, a heatmap of
//     the relative change per layer and tensor kind.
//
// Names come from files and may be hostile: every renderer escapes them for
// its format.
package report
