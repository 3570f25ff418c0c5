-- The server's clock, µs since the epoch (clock_timestamp: the moment, not the transaction's start).
SELECT (extract(epoch FROM clock_timestamp()) * 1e6)::int8
