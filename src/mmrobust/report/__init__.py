"""Reports: Table-7-shaped tables, per-task tables, ablation tables, plots; run loading and comparison."""
