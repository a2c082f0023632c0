"""Each actor's SQLite database and everything about its files: the template and syncs,
schema images, what guest SQL may do, long statements, the alarm's row, the index, paths.
The only package that uses apsw."""
