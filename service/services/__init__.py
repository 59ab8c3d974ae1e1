"""Domain operations, free of Flask: each takes a session and plain values."""
