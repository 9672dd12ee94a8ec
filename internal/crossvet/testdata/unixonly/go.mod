module unixonly

go 1.26
