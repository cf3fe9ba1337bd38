package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
)

// onlyMeasurements are the measurements -only runs alone, each filling
// the report's rows (and the figures that go with them).
var onlyMeasurements = map[string]func(ctx context.Context, cfg config, rep *report) error{
	"checkpoints": func(ctx context.Context, cfg config, rep *report) error {
		fmt.Fprintf(os.Stderr, "measuring checkpoints and restores...\n")
		first, later, restore, figs := measureCheckpoints(ctx, cfg)
		rep.Measurements, rep.Checkpoints = []measurement{first, later, restore}, &figs
		return nil
	},
	"watch": func(ctx context.Context, cfg config, rep *report) error {
		fmt.Fprintf(os.Stderr, "measuring the watch's cost to a command writing 10,000 files...\n")
		watched, unwatched := measureWatchCost(ctx, cfg)
		fmt.Fprintf(os.Stderr, "measuring file calls during a rename storm...\n")
		stormWatched, stormUnwatched := measureStormCalls(ctx, cfg)
		rep.Measurements = []measurement{watched, unwatched, stormWatched, stormUnwatched}
		return nil
	},
	"initialize": func(ctx context.Context, cfg config, rep *report) error {
		fmt.Fprintf(os.Stderr, "measuring initialize of new processes...\n")
		rep.Measurements = measureInitialize(ctx, cfg)
		return nil
	},
	"kubernetes": func(ctx context.Context, cfg config, rep *report) error {
		k, err := connectKubernetes(ctx, cfg)
		if err != nil {
			return err
		}
		rep.Machine["kubernetes"] = k.version
		fmt.Fprintf(os.Stderr, "measuring the Kubernetes engine...\n")
		rows, err := measureKubernetes(ctx, cfg, k)
		if err != nil {
			return err
		}
		rep.Measurements = rows.all()
		rep.setKubernetesSpeedup(rows)
		return nil
	},
	"egress": func(ctx context.Context, cfg config, rep *report) error {
		fmt.Fprintf(os.Stderr, "measuring egress throughput...\n")
		egress := measureEgress(ctx, cfg, cfg.egressSamples)
		preview := measurePortPreview(ctx, cfg, cfg.egressSamples)
		rep.Measurements = append(egress.all(), preview.all()...)
		rep.setEgressShare(egress.through, egress.direct)
		return nil
	},
	"preview": func(ctx context.Context, cfg config, rep *report) error {
		fmt.Fprintf(os.Stderr, "measuring port previews...\n")
		rep.Measurements = measurePortPreview(ctx, cfg, cfg.egressSamples).all()
		return nil
	},
	"cache":        measureCacheOnly,
	"egress-cache": measureCacheOnly, // its name before -only cache

	"fork": func(ctx context.Context, cfg config, rep *report) error {
		fmt.Fprintf(os.Stderr, "measuring forks of a workspace of 10,000 files / 100 MB...\n")
		rep.Measurements = measureForks(ctx, cfg)
		return nil
	},
	"services": func(ctx context.Context, cfg config, rep *report) error {
		fmt.Fprintf(os.Stderr, "measuring services beside the workspace...\n")
		rep.Measurements = measureServices(ctx, cfg)
		return nil
	},
	"burst": func(ctx context.Context, cfg config, rep *report) error {
		rep.Measurements = measureBursts(ctx, cfg)
		return nil
	},
	"profiles": func(ctx context.Context, cfg config, rep *report) error {
		fmt.Fprintf(os.Stderr, "measuring first calls with a profile...\n")
		cached, uncached := measureProfiles(ctx, cfg)
		rep.Measurements = []measurement{cached, uncached}
		return nil
	},
}

// measureCacheOnly is -only cache.
func measureCacheOnly(ctx context.Context, cfg config, rep *report) error {
	fmt.Fprintf(os.Stderr, "measuring the egress artefact cache...\n")
	rep.Measurements = measureEgressCache(ctx, cfg, cfg.egressSamples)
	return nil
}

// onlyNames are -only's values, sorted.
func onlyNames() []string { return slices.Sorted(maps.Keys(onlyMeasurements)) }
