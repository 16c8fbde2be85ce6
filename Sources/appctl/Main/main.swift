import AppctlKit

// appctl's entry point; everything else is in AppctlKit.
Appctl.main()
