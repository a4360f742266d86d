"""The parameter-server twin: spec, event loop, result, replay of recorded reports."""
