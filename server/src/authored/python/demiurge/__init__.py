"""The demiurge SDK as authored tools see it inside a demiurge host runner."""
