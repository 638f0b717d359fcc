set terminal svg size 800,600 dynamic
set termoption noenhanced
set encoding utf8
set output 'robot_speed.svg'
set datafile separator ','
set key autotitle columnhead
set xlabel 'speed factor'
set ylabel 'actions'
set title 'usable chunk and bound: realtime-robot-cpu'
plot 'robot_speed.csv' using 1:7 with linespoints title 'usable (min)', '' using 1:8 with lines title 'executed per chunk', '' using 1:($12 > 0 ? $7 : 1/0) with points pt 7 ps 1.5 title 'motion-bound', '' using 1:($9 > 0 ? $7 : 1/0) with points pt 6 ps 2 title 'control-bound (ran dry)', '' using 1:20 with linespoints dt 2 title 'usable (min), measured'
