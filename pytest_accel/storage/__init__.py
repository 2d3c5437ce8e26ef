"""Files on disk: the one home of locking, atomic writes, strict reading and the versioned entry files."""
