"""The R²SP paper (cluster mode): its figures on the virtual-time twin (:mod:`.twin`, paper
size, hardware efficiency only) and in small real CPU runs (:mod:`.real`)."""
