"""The index formats: file indexes, global indexes, table indexes; and what spans them (a column
read as another type, the fuzz run at scale over every reader)."""
