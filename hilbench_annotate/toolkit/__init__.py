"""Tools every app uses and none owns: git plumbing, patches, the read-only SQL console,
text diffs, result-table comparison and SVG charts. They import nothing but core's errors."""
