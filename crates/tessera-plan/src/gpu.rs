//! GPU plans and the resource model (Rawat §2): block shapes, time tiles, occupancy.
