"""PlantUML tools: check, render, parse to class and architecture models, lint."""
