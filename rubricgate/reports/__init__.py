"""What a run leaves behind for people: summary, replay artifacts, HTML, comment, JUnit, trend."""
