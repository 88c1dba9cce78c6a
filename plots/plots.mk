# Figures, included by the Makefile after BUILD is set.
#   make plots       renders results/<gpu>/*.csv into plots/<gpu>/*.png for every GPU
#                    directory under results/ (baseline/ and profiles/ are not results;
#                    <gpu>-x2/ holds the two-GPU checks, whose grids are the one-GPU ones)
#   make test-plots  renders every figure from the fixture CSVs and checks the PNGs
PLOT_GPUS := $(sort $(filter-out baseline profiles %-x2,\
               $(notdir $(patsubst %/,%,$(dir $(wildcard results/*/*.csv))))))

.PHONY: plots test-plots
plots: $(BUILD)/attnbench
	@set -e; for gpu in $(PLOT_GPUS); do \
	    ATTNBENCH=$(BUILD)/attnbench plots/render.sh results/$$gpu plots/$$gpu; \
	done

test-plots: $(BUILD)/attnbench
	ATTNBENCH=$(BUILD)/attnbench tests/test_plots.sh
