"""Group screening, pure: `strategy` is the `GroupScreening` strategy; its parts are the search
tree (`tree`), the search's test (`answers`), looks and Holm (`claims`), ddmin's probes
(`reductions`), the clearing groups (`clearing`), the arms' records (`records`); `result` is
the answer type, which never imports the strategy back."""
