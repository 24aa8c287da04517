"""Analyses: take a ParsedLog, return frozen result objects; never print."""
