"""Data loaders (official archive layouts, checksum-verified, never fetched at test time)."""
