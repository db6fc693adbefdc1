"""Turn trials into outcomes: the trial protocol, targets, local and Ray runners."""
